"""In the built image, what the server writes in /data belongs to user and group `hermes`.

tests/test_container.py checks the Dockerfile's lines; this checks the image they build,
where a Docker daemon runs (skipped with the reason elsewhere, as tests/test_container_docker.py).
"""

from __future__ import annotations

from tests.test_container_docker import docker, image  # noqa: F401 - `image` is the fixture that builds it


def test_files_written_in_data_carry_a_named_group(image: str) -> None:  # noqa: F811 - the fixture
    probe = "id -un; id -gn; touch /data/probe; stat -c %U:%G /data /data/probe"
    out = docker("run", "--rm", "--entrypoint", "sh", image, "-c", probe, timeout=120).stdout.split()
    assert out == ["hermes", "hermes", "hermes:hermes", "hermes:hermes"], out
