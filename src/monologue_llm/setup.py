from setuptools import find_packages, setup

package_name = 'monologue_llm'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    # the shipped LoRA adapters of the embedded model and their model card (config/llm/embedded_tuned.yaml)
    package_data={package_name: ['adapters/*.gguf', 'adapters/*.md']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Inner Monologue ROS maintainers',
    maintainer_email='maintainers@inner-monologue-ros.dev',
    description='ROS-free LLM library of the Inner Monologue graph: backends (llama.cpp, OpenAI-compatible), cassette, scoring.',
    license='Apache-2.0',
)
