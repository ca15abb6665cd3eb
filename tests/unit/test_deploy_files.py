"""The deployment files (deploy/compose.yaml, deploy/systemd/, deploy/Dockerfile) stay honest:
every RELATA_* variable they set is a declared setting with a value it accepts, and every
`relata` command line they run parses with the real CLI. No container engine runs where the
tests do, so this is what keeps them from drifting from the code (docs/deploy.md)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from relata.cli.main import build_parser
from relata.config.settings import SETTINGS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PARSERS = {s.env: s.parse for s in SETTINGS}
_INTERPOLATION = re.compile(r"\$\{[^}]*\}")


def check_setting(name: str, value: str, where: str) -> None:
    assert name in PARSERS, f"{where}: {name} is not a setting (config/settings.py)"
    try:
        PARSERS[name](_INTERPOLATION.sub("secret", value))
    except ValueError as exc:
        pytest.fail(f"{where}: {name}={value!r} is refused by the setting: {exc}")


def check_command(args: list[str], where: str) -> None:
    try:
        build_parser(args).parse_args(args)
    except SystemExit:
        pytest.fail(f"{where}: `relata {' '.join(args)}` is not a valid relata command line")


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def relata_services() -> dict[str, dict[str, Any]]:
    return {
        name: s for name, s in compose()["services"].items() if s.get("image") == "relata:local"
    }


def test_compose_sets_only_real_settings_and_runs_real_commands() -> None:
    services = relata_services()
    assert {"migrate", "serve", "worker"} <= set(services)
    for name, service in services.items():
        for key, value in service["environment"].items():
            if key.startswith("RELATA_"):
                check_setting(key, str(value), f"compose service {name}")
        check_command([str(a) for a in service["command"]], f"compose service {name}")
    for name, service in compose()["services"].items():
        for key in service.get("environment", {}):
            assert not key.startswith("RELATA_") or name in services, (name, key)


def test_compose_runs_pgvector_and_shares_the_data_dir_between_serve_and_workers() -> None:
    c = compose()
    assert c["services"]["db"]["image"] == "pgvector/pgvector:pg17"
    services = relata_services()
    for name in ("serve", "worker"):
        env = services[name]["environment"]
        assert env["RELATA_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert f"relata-data:{env['RELATA_DATA_DIR']}" in services[name]["volumes"]
    assert services["serve"]["environment"]["RELATA_WORKERS"] == "0"
    assert services["worker"]["deploy"]["replicas"] >= 2


def unit_lines(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.lstrip().startswith(("#", "[")):
            key, _, value = line.partition("=")
            pairs.append((key.strip(), value.strip()))
    return pairs


@pytest.mark.parametrize(
    "unit", sorted(p.name for p in (DEPLOY / "systemd").glob("*.service")), ids=str
)
def test_systemd_units_set_only_real_settings_and_run_real_commands(unit: str) -> None:
    path = DEPLOY / "systemd" / unit
    for key, value in unit_lines(path):
        if key == "Environment":
            name, _, setting = value.partition("=")
            check_setting(name, setting, unit)
        elif key == "ExecStart":
            program, *args = shlex.split(value)
            assert program.endswith("/bin/relata"), unit
            check_command(args, unit)
        elif key == "EnvironmentFile":
            assert Path(value).name == "relata.env", unit


def test_the_environment_file_sets_only_real_settings() -> None:
    for key, value in unit_lines(DEPLOY / "systemd" / "relata.env"):
        check_setting(key, value, "relata.env")


def test_the_dockerfile_sets_real_settings_and_runs_a_real_command() -> None:
    text = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    for name, value in re.findall(r"^ENV (RELATA_\w+)=(\S+)", text, flags=re.MULTILINE):
        check_setting(name, value, "Dockerfile")
    [cmd] = re.findall(r"^CMD (\[.*\])$", text, flags=re.MULTILINE)
    check_command(yaml.safe_load(cmd), "Dockerfile")
