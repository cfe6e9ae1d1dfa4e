from setuptools import find_packages, setup

package_name = 'monologue_web'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    package_data={package_name: ['static/*']},
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='Inner Monologue ROS maintainers',
    maintainer_email='maintainers@inner-monologue-ros.dev',
    description='Live web monitor and console of the monologue (FastAPI, websockets, a static page).',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'monologue_web = monologue_web.node:main',
            'foxglove_bridge = monologue_web.foxglove_bridge:main',
            'monologue-web-cert = monologue_web.core.certs:main',
        ],
    },
)
