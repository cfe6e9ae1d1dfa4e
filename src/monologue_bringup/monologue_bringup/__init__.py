"""monologue_bringup."""
