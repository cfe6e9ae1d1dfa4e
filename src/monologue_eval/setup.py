from setuptools import find_packages, setup

package_name = 'monologue_eval'

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
    description='Evaluation: the IM Table 1 benchmark, the demo, replay comparison, bag info, component benchmarks.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'monologue-demo = monologue_eval.demo:main',
            'monologue-bench = monologue_eval.bench:main',
            'monologue-replay = monologue_eval.replay:main',
            'monologue-bag-info = monologue_eval.bag_info:main',
            'monologue-report = monologue_eval.results.cli:main',
            'monologue-bench-sim = monologue_eval.benchmarks.bench_sim:main',
            'monologue-bench-perception = monologue_eval.benchmarks.bench_perception:main',
            'monologue-bench-planner = monologue_eval.benchmarks.bench_planner:main',
        ],
    },
)
