"""ROS-free skill logic shared by the robots: the SkillBackend protocol, the arm (types, kinematics, safety layer,
pick-and-place backend, settings) and the symbolic worlds' backend base."""
