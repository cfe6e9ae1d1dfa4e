"""ROS-free skill logic: the tabletop world, skill backends and affordances."""
