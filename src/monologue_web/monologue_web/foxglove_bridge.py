"""foxglove_bridge: the project's topics on a live Foxglove WebSocket server (rclpy adapter).

Discovers the configured topics (names or fnmatch patterns, section `foxglove_bridge` of
config/monologue.yaml) as they appear, subscribes to each with a raw (CDR) subscription and the QoS its
publishers offer (transient-local when they all latch), and forwards every message unchanged on a
`cdr` channel with a `ros2msg` schema (core.foxglove_server). Connect Foxglove to the logged ws:// URL;
docs/web.md, section Foxglove.
"""
from __future__ import annotations

import functools
import importlib
import logging
import time
from typing import Any

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription

from monologue_common.core.msgdefs import DefinitionError, split_type
from monologue_common.interfaces import installed_definitions
from monologue_common.params import NODE_OPTIONS, read_settings
from monologue_common.runtime import Component, TypedNode, published_topics, run_node

from .core.foxglove_channels import (
    FoxgloveSettings,
    TopicSelection,
    channel_spec,
    foxglove_settings_from_parameters,
    history_depth,
)
from .core.foxglove_server import FoxgloveServer


def message_class(type_name: str) -> Any:
    """The generated Python class of `pkg/msg/Name`; DefinitionError if there is none."""
    pkg, kind, name = split_type(type_name)
    if kind != "msg":
        raise DefinitionError(f"{type_name}: only message topics can be bridged")
    try:
        return getattr(importlib.import_module(f"{pkg}.msg"), name)
    except (ImportError, AttributeError) as e:
        raise DefinitionError(f"no Python message class for {type_name}: {e}") from e


class FoxgloveBridgeNode(TypedNode):
    def __init__(self) -> None:
        super().__init__("foxglove_bridge", **NODE_OPTIONS)
        s: FoxgloveSettings = read_settings(self, foxglove_settings_from_parameters)
        self.settings = s
        self._selection = TopicSelection(list(s.topics), dict(s.max_rates))
        self._definitions = installed_definitions()
        self._subs: dict[str, Subscription] = {}
        self._failed: set[str] = set()
        self._server = FoxgloveServer(s.host, s.port, s.name, logging.getLogger("foxglove_bridge"),
                                      s.message_backlog)
        self.port = self._server.port
        self._group = MutuallyExclusiveCallbackGroup()  # messages forwarded in the order they arrive
        self._timer = self.create_timer(s.discovery_period, self._discover)
        self.get_logger().info(f"Foxglove server on {s.url(self.port)}; bridging {list(s.topics)}")
        if not s.local:
            self.get_logger().warning(f"bound to {s.host}, not loopback: the Foxglove protocol has no "
                                      "authentication, anyone who reaches this port sees every bridged topic")
        self._discover()

    def _discover(self) -> None:
        for topic, types, infos in published_topics(self, self._selection.wanted,
                                                    lambda t: t in self._subs or t in self._failed):
            type_name = types[0]
            profiles = [i.qos_profile for i in infos]
            reliable = all(p.reliability == ReliabilityPolicy.RELIABLE for p in profiles)
            latched = all(p.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in profiles)
            keep = history_depth(topic, latched, self.settings)
            try:
                cls = message_class(type_name)
                spec = channel_spec(topic, type_name, self._definitions, latched, keep)
            except DefinitionError as e:
                self._failed.add(topic)
                self.get_logger().error(f"cannot bridge {topic} ({type_name}): {e}")
                continue
            self._server.advertise(spec)
            qos = QoSProfile(
                depth=max(self.settings.depth, keep), history=HistoryPolicy.KEEP_LAST,
                reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)
            # two-argument callback: rclpy passes the message info (source timestamp) too
            self._subs[topic] = self.create_subscription(
                cls, topic, functools.partial(self._on_message, topic), qos, callback_group=self._group, raw=True)
            self.get_logger().info(f"bridging {topic} [{type_name}]"
                                   f"{f' transient-local, {keep} kept for late clients' if latched else ''}")

    def _on_message(self, topic: str, data: bytes, info: dict[str, int]) -> None:
        # the publisher's send time (also for the history a latched topic delivers on joining)
        t = int(info.get("source_timestamp", 0)) or int(info.get("received_timestamp", 0)) or time.time_ns()
        if self._selection.admit(topic, t):
            self._server.publish(topic, bytes(data), t)

    def destroy_node(self) -> None:
        try:
            self._server.stop()
        finally:
            super().destroy_node()  # type: ignore[no-untyped-call]  # unannotated in rclpy


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(FoxgloveBridgeNode, threads=2)


def main(args: list[str] | None = None) -> None:
    run_node(FoxgloveBridgeNode, threads=2, args=args)
