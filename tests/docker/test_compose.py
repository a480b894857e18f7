"""docker/compose.yaml, the Prometheus scrape config and Grafana's provisioning: they parse,
and everything they name exists and agrees with the image."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from config.loader import load as load_config
from tests.docker import compose
from tests.docker.compose import COMPOSE, environment, interpolate, mount_at, mounts
from tests.docker.dashboard import DASHBOARD
from tests.docker.image import DOCKER, Dockerfile
from tests.tools import tool

PROMETHEUS_YML = DOCKER / "prometheus" / "prometheus.yml"
PROVISIONING = DOCKER / "grafana" / "provisioning"


@pytest.fixture(scope="module")
def stack() -> dict[str, Any]:
    return compose.load()


@pytest.fixture(scope="module")
def services(stack: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = stack["services"]
    return found


def _docker_compose() -> list[str] | None:
    standalone = Path(sys.executable).parent / "docker-compose"
    if standalone.exists():
        return [str(standalone)]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


def test_docker_compose_accepts_the_file() -> None:
    command = _docker_compose()
    if command is None:
        pytest.skip("neither docker-compose (pip install -e '.[test]') nor the docker compose plugin is here")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
    result = subprocess.run(
        [*command, "-f", str(COMPOSE), "--profile", "report", "config", "--quiet"],
        cwd=DOCKER,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_interpolation_reads_the_environment_and_keeps_defaults() -> None:
    assert interpolate("${A:-x}/${B-y}/$$C/${D}", {"A": "1"}) == "1/y/$C/"


def test_builds_name_an_existing_dockerfile_its_targets_and_args(services: dict[str, Any]) -> None:
    builds = {name: s["build"] for name, s in services.items() if "build" in s}
    assert builds.keys() == {"stompd", "report", "stompd-a", "stompd-b"}
    for name, build in builds.items():
        context = (DOCKER / build["context"]).resolve()
        assert context.is_dir(), name
        dockerfile = Dockerfile(context / build["dockerfile"])
        stage = dockerfile.stage(build["target"])
        for arg in build.get("args", {}):
            dockerfile.arg(stage, arg)  # raises unless the stage declares it
    assert services["stompd"]["build"]["target"] == "broker"
    assert services["report"]["build"]["target"] == "report"
    assert services["stompd-a"]["build"] == services["stompd-b"]["build"] == services["stompd"]["build"]


def test_every_mount_exists_and_every_named_volume_is_declared(
    stack: dict[str, Any], services: dict[str, Any]
) -> None:
    declared = set(stack["volumes"])
    used = set()
    for name, service in services.items():
        for mount in mounts(service):
            if mount.is_bind:
                assert mount.host_path.exists(), f"{name}: {mount.source} does not exist"
            else:
                assert mount.source in declared, f"{name}: volume {mount.source} is not declared"
                used.add(mount.source)
    assert used == declared, "declared volumes no service uses"


def test_depends_on_names_services_and_waits_only_for_health_checks_that_exist(
    services: dict[str, Any],
) -> None:
    for name, service in services.items():
        depends = service.get("depends_on", {})
        entries = depends.items() if isinstance(depends, dict) else ((d, {}) for d in depends)
        for other, how in entries:
            assert other in services, f"{name} depends on unknown {other}"
            if how.get("condition") == "service_healthy":
                build = services[other]["build"]
                dockerfile = Dockerfile((DOCKER / build["context"] / build["dockerfile"]).resolve())
                assert dockerfile.instruction(dockerfile.stage(build["target"]), "HEALTHCHECK") is not None


def test_the_broker_service_mounts_config_and_data_where_the_image_reads_them(
    services: dict[str, Any],
) -> None:
    service = services["stompd"]
    image = Dockerfile()
    broker = image.stage("broker")
    config_path = image.exec_form(broker, "ENTRYPOINT")[2]
    config = mount_at(service, config_path)
    assert config.read_only and config.host_path == DOCKER / "stack" / "activemq.xml"
    volume = broker.last("VOLUME")
    assert volume is not None
    assert not mount_at(service, "/var/lib/stompd").is_bind and '"/var/lib/stompd"' in volume.args
    env = image.env(broker)
    assert set(environment(service)) <= set(env), "variables the image does not read"
    published = dict(_published(port) for port in service["ports"])
    exposed = {int(p) for i in broker.all("EXPOSE") for p in i.args.split()}
    assert set(published) <= exposed
    assert int(env["STOMPD_STOMP_PORT"]) in published and int(env["STOMPD_HTTP_PORT"]) in published
    # The stack lets remote clients into the admin server (no users are configured), so it
    # is published on this host's loopback only.
    assert published[int(env["STOMPD_HTTP_PORT"])] == "127.0.0.1"


def _published(spec: str) -> tuple[int, str]:
    """ "[IP:][HOST_PORT:]CONTAINER_PORT" -> (container port, the host address it is published on)."""
    parts = str(spec).split(":")
    return int(parts[-1]), parts[0] if len(parts) == 3 else "0.0.0.0"


def _stack_config(services: dict[str, Any]) -> Any:
    """docker/stack/activemq.xml as the stompd service reads it (image ENV + compose environment)."""
    image = Dockerfile()
    env = {**image.env(image.stage("broker")), **environment(services["stompd"])}
    return load_config(DOCKER / "stack" / "activemq.xml", environ=env, cwd=Path("/var/lib/stompd"))


def test_the_stack_exports_to_the_volume_the_report_service_reads(services: dict[str, Any]) -> None:
    loaded = _stack_config(services)
    assert not loaded.warnings, loaded.warnings
    config = loaded.config
    assert config.http.allow_remote, "Prometheus and Grafana reach the admin server from other containers"
    assert config.export.directory is not None
    export = mount_at(services["stompd"], str(config.export.directory))
    report = services["report"]
    assert report["profiles"] == ["report"]
    read = [m for m in mounts(report) if m.source == export.source]
    assert len(read) == 1 and read[0].read_only
    command = report["command"]
    assert command[command.index("--input") + 1] == read[0].target
    output = command[command.index("--output") + 1]
    assert mount_at(report, output).host_path == DOCKER / "report"
    assert command[command.index("--master") + 1] == "local[*]"
    assert compose.load({"SPARK_MASTER": "spark://spark:7077"})["services"]["report"]["command"][-1] == (
        "spark://spark:7077"
    )


def test_prometheus_scrapes_the_broker_metrics_path(services: dict[str, Any]) -> None:
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    (job,) = config["scrape_configs"]
    assert job["metrics_path"] == "/metrics"
    (target,) = [t for group in job["static_configs"] for t in group["targets"]]
    host, _, port = target.partition(":")
    assert host in services and services[host]["build"]["target"] == "broker"
    image = Dockerfile()
    assert port == image.env(image.stage("broker"))["STOMPD_HTTP_PORT"]
    prometheus = services["prometheus"]
    config_flag = next(a for a in prometheus["command"] if a.startswith("--config.file="))
    assert mount_at(prometheus, config_flag.partition("=")[2]).host_path == PROMETHEUS_YML


def test_promtool_accepts_the_prometheus_config() -> None:
    result = subprocess.run(
        [tool("promtool"), "check", "config", str(PROMETHEUS_YML)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_grafana_is_provisioned_with_prometheus_and_the_dashboard(services: dict[str, Any]) -> None:
    grafana = services["grafana"]
    provisioning = mount_at(grafana, "/etc/grafana/provisioning")
    assert provisioning.host_path == PROVISIONING
    (datasource,) = yaml.safe_load((PROVISIONING / "datasources" / "prometheus.yml").read_text())[
        "datasources"
    ]
    assert datasource["type"] == "prometheus"
    url = urlsplit(datasource["url"])
    assert url.hostname == "prometheus" and url.hostname in services
    assert url.port in dict(_published(p) for p in services["prometheus"]["ports"])
    (provider,) = yaml.safe_load((PROVISIONING / "dashboards" / "stompd.yml").read_text())["providers"]
    assert provider["type"] == "file"
    dashboards = mount_at(grafana, provider["options"]["path"])
    assert dashboards.host_path == DASHBOARD.parent
    home = environment(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == f"{dashboards.target}/{DASHBOARD.name}" and DASHBOARD.is_file()


def test_the_pair_profile_is_two_brokers_on_one_volume_with_the_stores_lock(services: dict[str, Any]) -> None:
    pair = {name: s for name, s in services.items() if "pair" in s.get("profiles", [])}
    assert pair.keys() == {"stompd-a", "stompd-b"}
    image = Dockerfile()
    broker = image.stage("broker")
    config_path = image.exec_form(broker, "ENTRYPOINT")[2]
    data = {mount_at(s, "/var/lib/stompd").source for s in pair.values()}
    assert len(data) == 1 and not mount_at(pair["stompd-a"], "/var/lib/stompd").is_bind
    assert data.isdisjoint(m.source for m in mounts(services["stompd"]))
    for name, service in pair.items():
        config = mount_at(service, config_path)
        assert config.read_only and config.host_path == DOCKER / "pair" / "activemq.xml"
        assert service["hostname"] == name
    # Each its own host ports: clients list both.
    published = [p for s in pair.values() for p in s["ports"]] + list(services["stompd"]["ports"])
    host_ports = [str(p).split(":")[-2] for p in published]
    assert len(set(host_ports)) == len(host_ports)
    env = image.env(broker)
    loaded = load_config(DOCKER / "pair" / "activemq.xml", environ=env, cwd=Path("/var/lib/stompd"))
    assert not loaded.warnings, loaded.warnings
    config = loaded.config
    assert config.store_directory == Path("/var/lib/stompd/store")
    assert config.persistence.locker.lock_acquire_sleep_interval == 1000
    assert config.persistence.lock_keep_alive_period == 2000
    # The temp store is each broker's own, off the shared volume.
    assert not config.temp_directory.is_relative_to("/var/lib/stompd")
