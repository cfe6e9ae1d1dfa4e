"""Camera frames as JPEG for the page, and recorded bags' statistics from rosbag2 metadata.yaml (no rclpy)."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from monologue_vision.images import decode_color


def jpeg_from_image(data: bytes, width: int, height: int, encoding: str, step: int = 0,
                    max_width: int = 640, quality: int = 80) -> bytes:
    """A sensor_msgs/Image's bytes (rgb8, bgr8, rgba8, bgra8, mono8) as a JPEG at most `max_width` px wide;
    ValueError for an encoding or a size the page cannot show."""
    from PIL import Image

    rgb = decode_color(data, width, height, encoding, step)
    img = Image.fromarray(np.ascontiguousarray(rgb), "RGB")
    if img.width > max_width:
        img = img.resize((max_width, max(1, round(img.height * max_width / img.width))))
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=quality)
    return out.getvalue()


def _bag_summary(meta_file: Path) -> dict[str, Any]:
    info = (yaml.safe_load(meta_file.read_text(encoding="utf-8")) or {})["rosbag2_bagfile_information"]
    topics: list[dict[str, Any]] = []
    for t in info.get("topics_with_message_count") or []:
        m = t.get("topic_metadata") or {}
        topics.append({"topic": str(m.get("name", "")), "type": str(m.get("type", "")),
                       "messages": int(t.get("message_count", 0))})
    topics.sort(key=lambda x: str(x["topic"]))
    d = meta_file.parent
    size = sum((d / f).stat().st_size for f in info.get("relative_file_paths") or [] if (d / f).is_file())
    return {"name": d.name, "storage": str(info.get("storage_identifier", "")),
            "duration_s": int((info.get("duration") or {}).get("nanoseconds", 0)) / 1e9,
            "start_s": int((info.get("starting_time") or {}).get("nanoseconds_since_epoch", 0)) / 1e9,
            "messages": int(info.get("message_count", 0)), "size": size,
            "custom_data": {str(k): str(v) for k, v in (info.get("custom_data") or {}).items()},
            "topics": topics}


def list_bags(directories: list[Path], limit: int = 100) -> list[dict[str, Any]]:
    """The rosbag2 directories (a metadata.yaml inside) directly in `directories`, newest first, with their
    statistics: duration (s), start (s since the epoch), messages per topic, size (bytes). A bag whose
    metadata cannot be read is listed with its `error`."""
    found: list[Path] = []
    for root in directories:
        if root.is_dir():
            found.extend(p.parent for p in root.glob("*/metadata.yaml"))
            if (root / "metadata.yaml").is_file():
                found.append(root)
    found = sorted(set(found), key=lambda p: p.stat().st_mtime, reverse=True)[:limit]
    out = []
    for d in found:
        try:
            out.append(_bag_summary(d / "metadata.yaml"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, yaml.YAMLError) as e:
            out.append({"name": d.name, "error": f"unreadable metadata.yaml: {e}", "topics": []})
    return out
