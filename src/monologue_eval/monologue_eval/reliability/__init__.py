"""Reliability and security figures of issue 20 (docs/reliability.md): `python -m monologue_eval.reliability`
prints one table; each module computes one figure with the real ROS-free core objects."""
