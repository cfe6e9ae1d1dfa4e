"""The Foxglove WebSocket server of the bridge, over the `foxglove-sdk` package (no rclpy).

`FoxgloveServer` owns one foxglove Context (so nothing else logged in the process reaches its
clients), a channel per bridged topic (ChannelSpec) and the history of transient-local topics. A
client that subscribes to such a channel first gets its kept messages, sent to that client alone
(`Channel.log(..., sink_id=client.id)` from the server's `on_subscribe` callback, which the SDK calls
after registering the subscription and without holding its locks): the SDK keeps no message per
channel itself, so this is how a late Foxglove client sees the current transcript, scene and robot
status, as a late ROS subscriber of a latched topic would.

Caveat of foxglove-sdk 0.30.3: its Python `Client` exposes the client id but not the client's sink id.
Both are numbered from 1 by process-wide counters that advance together when a client connects, so
they are equal as long as the process creates no other foxglove sink (no MCAP writer, no second kind
of server): true in the bridge process. The unit tests check that a replay reaches only its client.

The SDK's server speaks the Foxglove WebSocket protocol under the subprotocol name `foxglove.sdk.v1`
(the messages of `foxglove.websocket.v1`: serverInfo, advertise, subscribe, binary message data).
"""
from __future__ import annotations

import logging
import threading

import foxglove
from foxglove.websocket import ChannelView, Client, ServerListener

from .foxglove_channels import ChannelSpec, History

SUBPROTOCOL = "foxglove.sdk.v1"


class FoxgloveServer(ServerListener):
    """A live Foxglove server publishing CDR channels; thread-safe (`publish` from any thread)."""

    def __init__(self, host: str, port: int, name: str, logger: logging.Logger, message_backlog: int = 1024) -> None:
        self._log = logger
        self._context = foxglove.Context()
        self._lock = threading.Lock()
        self._channels: dict[str, foxglove.Channel] = {}
        self._by_id: dict[int, str] = {}
        self._history = History()
        self._server = foxglove.start_server(
            name=name, host=host, port=port, server_listener=self, context=self._context,
            message_backlog_size=message_backlog)

    @property
    def port(self) -> int:
        """The TCP port the server listens on (the chosen one when started with port 0)."""
        return int(self._server.port)

    @property
    def topics(self) -> list[str]:
        with self._lock:
            return sorted(self._channels)

    def advertise(self, spec: ChannelSpec) -> bool:
        """Create the channel of `spec.topic` (advertised to every client); False if it exists."""
        with self._lock:
            if spec.topic in self._channels:
                return False
            schema = foxglove.Schema(name=spec.type_name, encoding=spec.schema_encoding, data=spec.schema)
            channel = foxglove.Channel(spec.topic, schema=schema, message_encoding=spec.message_encoding,
                                       context=self._context, metadata=spec.metadata)
            self._history.configure(spec.topic, spec.history)
            self._channels[spec.topic] = channel
            self._by_id[channel.id()] = spec.topic
        return True

    def publish(self, topic: str, data: bytes, t_ns: int) -> None:
        """Send one serialized message (CDR bytes) of `topic` at `t_ns` (ns since the epoch) to the
        clients subscribed to it, and keep it for later ones if the topic is transient-local."""
        with self._lock:  # history and live sends in one order, so a replay never follows a newer message
            channel = self._channels.get(topic)
            if channel is None:
                return
            self._history.add(topic, data, t_ns)
            channel.log(data, log_time=t_ns)

    # -- foxglove.websocket.ServerListener ----------------------------------------------------------
    def on_subscribe(self, client: Client, channel: ChannelView) -> None:
        """Replay the kept messages of a transient-local channel to the subscribing client only."""
        with self._lock:
            topic = self._by_id.get(channel.id)
            ch = self._channels.get(topic) if topic is not None else None
            if ch is None or topic is None:
                return
            kept = self._history.messages(topic)
            for data, t_ns in kept:
                ch.log(data, log_time=t_ns, sink_id=client.id)
        if kept:
            self._log.debug("client %s subscribed to %s: replayed %d kept message(s)", client.id, topic, len(kept))

    def stop(self) -> None:
        """Stop the server (clients are disconnected) and close every channel."""
        self._server.stop()
        with self._lock:
            for ch in self._channels.values():
                ch.close()
            self._channels.clear()
            self._by_id.clear()
