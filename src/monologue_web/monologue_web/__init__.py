"""monologue_web: the live web monitor and console of the monologue."""
