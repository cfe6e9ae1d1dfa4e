"""Which topics the recorder takes, and the per-topic rate limit."""
from __future__ import annotations

import pytest

from monologue_bag.core.recording import NS, TopicSelection, parse_rates


def test_patterns_match_names_with_or_without_a_leading_slash() -> None:
    sel = TopicSelection(["sim/ground_truth", "/camera/*", ""])
    assert sel.wanted(["/sim/ground_truth", "/camera/color/image_raw", "/camera/depth/x", "/tf"]) == [
        "/camera/color/image_raw", "/camera/depth/x", "/sim/ground_truth"]
    with pytest.raises(ValueError, match="at least one topic"):
        TopicSelection([""])


def test_rate_limit_keeps_at_most_one_message_per_period() -> None:
    sel = TopicSelection(["/camera/*", "/tf"], parse_rates(["camera/*/image_raw=5"]))
    kept = [t for t in range(0, NS, NS // 20) if sel.admit("/camera/color/image_raw", t)]
    assert kept == [0, NS // 5, 2 * NS // 5, 3 * NS // 5, 4 * NS // 5]
    assert all(sel.admit("/tf", t) for t in range(0, NS, NS // 20))
    assert sel.max_rate("/tf") is None


@pytest.mark.parametrize("bad", ["/x", "/x=0", "/x=fast", "=3"])
def test_malformed_rates_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="Hz"):
        parse_rates([bad])
