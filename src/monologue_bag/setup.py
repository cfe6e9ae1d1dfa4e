from setuptools import find_packages, setup

package_name = 'monologue_bag'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Inner Monologue ROS maintainers',
    maintainer_email='maintainers@inner-monologue-ros.dev',
    description='Record runs to rosbag2 (MCAP) and replay them through the graph.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'bag_recorder = monologue_bag.recorder:main',
            'bag_player = monologue_bag.player:main',
        ],
    },
)
