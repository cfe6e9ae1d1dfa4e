from setuptools import find_packages, setup

package_name = 'perception_node'

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
    description='Scene description from ground truth or RGB-D perception.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'perception_node = perception_node.node:main',
            'realsense_publisher = perception_node.realsense_publisher:main',
        ],
    },
)
