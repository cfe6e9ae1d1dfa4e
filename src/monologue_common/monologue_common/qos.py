"""Named QoS profiles, so every node agrees on them."""
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy


def latched(depth: int = 1) -> QoSProfile:
    """State that late joiners need (scene description, ground truth, transcript)."""
    return QoSProfile(
        depth=depth,
        history=HistoryPolicy.KEEP_LAST,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
        reliability=ReliabilityPolicy.RELIABLE,
    )


LATCHED = latched()
TRANSCRIPT = latched(1000)  # late joiners get the current episode's events
