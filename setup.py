"""The one thing pyproject.toml cannot declare stably: the scanner's C extension.

Optional: without a C compiler the install still succeeds and the numpy scanner reads
every chunk, in ~2x the time (bisector/logs/glogscan.py; `bisector doctor` says which one runs).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "bisector.logs._glogscan",
            sources=["bisector/logs/_glogscan.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra"],
            optional=True,
        )
    ]
)
