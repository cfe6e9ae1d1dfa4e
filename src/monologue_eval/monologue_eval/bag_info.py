"""`monologue-bag-info <bag>`: a recorded run's transcript and statistics (no ROS graph needed).

    monologue-bag-info runs/demo_bag [--data]

Prints the bag's duration, size and topics (messages, rate, type), every episode's transcript with
its steps, successes and outcome, and the LLM time and tokens from the cassette stored with the bag.
"""
from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    from monologue_bag.core.bagio import Bag, BagError
    from monologue_bag.core.episode import TRANSCRIPT_TOPIC, read_recording
    from monologue_bag.core.stats import format_info, llm_stats

    ap = argparse.ArgumentParser(prog="monologue-bag-info", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bag", type=Path, help="rosbag2 directory")
    ap.add_argument("--data", action="store_true", help="also print every event's structured data")
    ns = ap.parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        with Bag(ns.bag) as bag:
            recording = read_recording(bag, logging.getLogger("bag_info")) if TRANSCRIPT_TOPIC in bag.topics else None
            print(format_info(bag.path, bag.topics, bag.start_ns, bag.end_ns, bag.custom_data, recording,
                              llm_stats(bag.cassette_path), show_data=ns.data))
    except (BagError, ValueError) as e:
        print(f"monologue-bag-info: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
