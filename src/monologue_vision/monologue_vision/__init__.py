"""Vision library (ROS-free) shared by perception_node and success_detector_node.

* :mod:`.images`: sensor_msgs/Image bytes (given their encoding) -> numpy arrays;
* :mod:`.models`: loading transformers models from local directories only (no downloads);
* :mod:`.clip`: the CLIP image-text scorer;
* :mod:`.tiny_models`: tiny random-weight models saved to disk, for tests.

torch and transformers are imported on first use, so ``import monologue_vision`` needs neither.
"""
from __future__ import annotations

from .images import RgbImage, decode_color, decode_depth
from .models import ModelLoadError

__all__ = ["ModelLoadError", "RgbImage", "decode_color", "decode_depth"]
