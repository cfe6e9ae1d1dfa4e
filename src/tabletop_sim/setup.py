from setuptools import find_packages, setup

package_name = 'tabletop_sim'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml', 'README.md']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Inner Monologue ROS maintainers',
    maintainer_email='maintainers@inner-monologue-ros.dev',
    description='MuJoCo tabletop with a UR5e, a suction cup and an RGB-D camera, driven like the real robot.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'tabletop_sim = tabletop_sim.node:main'
        ],
    },
)
