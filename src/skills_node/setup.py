from setuptools import find_packages, setup

package_name = 'skills_node'

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
    description='Executes skills in simulation or on a UR5e or Spot, and reports affordances.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'skills_node = skills_node.node:main',
            'fake_spot = skills_node.robots.spot.testing.serve:main',
            'fake_ur_controller = skills_node.robots.ur5e.testing.fake_controller:main',
            'fake_ur_truth = skills_node.robots.ur5e.testing.fake_tabletop_truth:main',
        ],
    },
)
