"""bag_recorder: records the configured topics, serialized as published, into a rosbag2 MCAP directory.

Like `ros2 bag record`, but installable from PyPI: it discovers the configured topics (names or
`fnmatch` patterns, hidden action topics included) as they appear, subscribes to each with raw
(CDR) subscriptions and the QoS its publishers offer, and writes them with their schemas. The bag is
finished (metadata.yaml written) when the node shuts down (SIGINT/SIGTERM); what was recorded is flushed
into the file every FLUSH_PERIOD_S, so a recorder that is killed (SIGKILL) leaves a bag that
monologue_bag.core.bagio.Bag reads up to its last flush.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import signal
import threading
import time
from pathlib import Path

import rclpy
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.serialization import deserialize_message
from rclpy.signals import SignalHandlerOptions
from rclpy.subscription import Subscription
from rclpy.utilities import ok
from std_msgs.msg import String

from monologue_common.core.msgdefs import DefinitionError, MessageDefinitions
from monologue_common.params import NODE_OPTIONS, parameter_values, warn_unused
from monologue_common.qos import LATCHED
from monologue_common.runtime import Component, TypedNode, published_topics

from .core.bagio import BagError, BagWriter
from .core.episode import TRANSCRIPT_TOPIC
from .core.recording import TopicSelection
from .core.settings import recorder_settings_from_parameters
from .rostypes import message_class, offered_qos, qos_profile, share_dir

PROGRESS_TOPIC = "recorder/progress"  # std_msgs/String, latched: {"transcript": {episode_id: events written},
# "flushed": {episode_id: events in the file}, "patterns": [topic patterns], "topics": [topics subscribed]}
FLUSH_PERIOD_S = 1.0  # s between flushes of what was recorded into the file (a killed recorder loses at most this)


class RecorderNode(TypedNode):
    def __init__(self) -> None:
        super().__init__("recorder", **NODE_OPTIONS)
        s = self.settings = recorder_settings_from_parameters(parameter_values(self))
        warn_unused(self, list(s.unused))
        self._selection = TopicSelection(list(s.topics), dict(s.max_rates))
        self._depth = s.depth
        custom = dict(s.custom_data)
        custom.setdefault("monologue.recorded_by", f"bag_recorder pid {os.getpid()}")
        self._writer = BagWriter(Path(os.path.expanduser(s.output)), MessageDefinitions(share_dir),
                                 logging.getLogger("recorder.bag"), compress=s.compress, custom_data=custom)
        self._writer.open()
        self._subs: dict[str, Subscription] = {}
        self._failed: set[str] = set()
        self._last_rx = time.monotonic()
        # transcript events written per episode (index + 1 of the highest), on PROGRESS_TOPIC, so a
        # client that saw an episode end can wait until its last events are in the bag before stopping
        self._transcript_counts: dict[str, int] = {}
        self._transcript_class: type | None = None
        self._progress = self.create_publisher(String, PROGRESS_TOPIC, LATCHED)
        self._group = MutuallyExclusiveCallbackGroup()  # one writer thread at a time, in order
        # discovery in the writers' group too: both touch what _publish_progress serialises
        self._timer = self.create_timer(s.discovery_period, self._discover, callback_group=self._group)
        self._flushed: dict[str, int] = {}  # transcript events per episode in the file (survive a SIGKILL)
        self._flush_timer = self.create_timer(FLUSH_PERIOD_S, self._flush, callback_group=self._group)
        self.get_logger().info(f"recording {self._selection.patterns} into {self._writer.path}")
        self._discover()
        self._publish_progress()

    def _discover(self) -> None:
        for topic, types, infos in published_topics(self, self._selection.wanted,
                                                    lambda t: t in self._subs or t in self._failed):
            type_name = types[0]
            if len(types) > 1:
                self.get_logger().warning(f"{topic} has several types {types}; recording {type_name}")
            try:
                cls = message_class(type_name)
                qos = offered_qos([i.qos_profile for i in infos], self._depth)
                self._writer.add_topic(topic, type_name, qos)
            except (DefinitionError, BagError) as e:
                self._failed.add(topic)
                self.get_logger().error(f"cannot record {topic} ({type_name}): {e}")
                continue
            # two-argument callback: rclpy passes the message info (rmw receive time) too
            if topic == TRANSCRIPT_TOPIC:
                self._transcript_class = cls
            self._subs[topic] = self.create_subscription(
                cls, topic, functools.partial(self._on_message, topic), qos_profile(qos),
                callback_group=self._group, raw=True)
            self.get_logger().info(f"recording {topic} [{type_name}]"
                                   f"{' transient-local' if qos.transient_local else ''}")
            self._publish_progress()  # a client can wait until the topics it sees are recorded

    def _on_message(self, topic: str, data: bytes, info: dict[str, int]) -> None:
        # The publisher's send time orders messages as they happened across topics (a skill's last
        # scene before its result), also for history a transient-local topic delivers when the recorder
        # joins late; the executor's processing order does neither. Fallbacks: receive time, now.
        t = int(info.get("source_timestamp", 0)) or int(info.get("received_timestamp", 0)) or time.time_ns()
        self._last_rx = time.monotonic()
        if self._selection.admit(topic, t):
            try:
                self._writer.write(topic, t, bytes(data))
            except BagError as e:
                self.get_logger().error(f"dropped a message on {topic}: {e}")
                return
            if topic == TRANSCRIPT_TOPIC and self._transcript_class is not None:
                self._count_transcript(bytes(data))

    def _count_transcript(self, data: bytes) -> None:
        event = deserialize_message(data, self._transcript_class)
        n = max(self._transcript_counts.get(event.episode_id, 0), int(event.index) + 1)
        self._transcript_counts[event.episode_id] = n
        self._publish_progress()

    def _publish_progress(self) -> None:
        self._progress.publish(String(data=json.dumps({
            "transcript": self._transcript_counts, "flushed": self._flushed,
            "patterns": list(self._selection.patterns), "topics": sorted(self._subs)})))

    def _flush(self) -> None:
        """Put what was recorded into the file (the writer buffers a chunk in memory), so a recorder
        that is killed leaves a bag readable up to here (monologue_bag.core.bagio.Bag)."""
        try:
            wrote = self._writer.flush()
        except (BagError, OSError) as e:
            self.get_logger().error(f"could not flush the bag: {e}")
            return
        if wrote and self._flushed != self._transcript_counts:
            self._flushed = dict(self._transcript_counts)
            self._publish_progress()

    def drain(self, quiet_s: float = 0.3, max_s: float = 3.0) -> None:
        """Wait until no message arrived for `quiet_s` (s), at most `max_s` (s): the last messages of a
        run (the final transcript events) are still in flight when the graph is stopped."""
        deadline = time.monotonic() + max_s
        while time.monotonic() < deadline and time.monotonic() - self._last_rx < quiet_s:
            time.sleep(0.05)

    def destroy_node(self) -> None:
        try:
            self._flush_timer.cancel()
            self._writer.close()
        finally:
            super().destroy_node()  # type: ignore[no-untyped-call]  # unannotated in rclpy


# The node in an in-process graph (monologue-up container:=true), with the threads main() spins it on.
COMPONENT = Component(RecorderNode, threads=2, before_stop=RecorderNode.drain)


def main(args: list[str] | None = None) -> None:
    """Spin until SIGINT/SIGTERM, then drain what is in flight and finish the bag."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    node: RecorderNode | None = None
    executor = MultiThreadedExecutor(num_threads=2)
    try:
        node = RecorderNode()
        executor.add_node(node)
        spinner = threading.Thread(target=executor.spin, daemon=True)
        spinner.start()
        while not stop.wait(0.2) and spinner.is_alive():
            pass
        node.drain()
    finally:
        executor.shutdown(timeout_sec=2.0)
        if node is not None:
            node.destroy_node()
        if ok():
            rclpy.shutdown()
