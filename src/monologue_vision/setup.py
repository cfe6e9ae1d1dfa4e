from setuptools import find_packages, setup

package_name = 'monologue_vision'

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
    description='ROS-free vision library of the Inner Monologue graph: image decoding, CLIP scoring, model loading.',
    license='Apache-2.0',
)
