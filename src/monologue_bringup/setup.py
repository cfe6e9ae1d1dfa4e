import os

from setuptools import find_packages, setup

package_name = 'monologue_bringup'
# The top-level launch/ and config/ directories are the single source; they are installed here.
ROOT = os.path.relpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))


def tree(src):
    out = []
    for dirpath, _dirs, files in os.walk(os.path.join(ROOT, src)):
        rel = os.path.relpath(dirpath, ROOT)
        if files:
            out.append((os.path.join('share', package_name, rel), [os.path.join(dirpath, f) for f in files]))
    return out


setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ] + tree('launch') + tree('config'),
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Inner Monologue ROS maintainers',
    maintainer_email='maintainers@inner-monologue-ros.dev',
    description='Graph description, launch files, the supervisor (monologue-up) and the human console.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'monologue-up = monologue_bringup.up:main',
            'monologue-calibrate = monologue_bringup.calibrate:main',
            'monologue-check = monologue_bringup.check_cli:main',
            'monologue-human = monologue_bringup.human:main',
            'monologue-keystore = monologue_bringup.keystore:main',
            'monologue-keys = monologue_bringup.keystore:main',
        ],
    },
)
