"""The store's lock in ActiveMQ's words: ``<locker><shared-file-locker>``,
``lockKeepAlivePeriod``, ``failIfLocked``, ``tmpDataDirectory``, their flags, and
``--check-config``'s rows."""

from __future__ import annotations

from pathlib import Path

from broker.app import LockSettings
from broker.settings_bridge import broker_options, not_applied
from config.loader import load
from config.model import BrokerConfig, origin_of
from config.overrides import Override, apply
from config.report import render
from tests.config.helpers import FIRST_BODY_LINE, load_body, one_error, warnings_of


def _adapter(kind: str, attrs: str, locker: str = "") -> str:
    inner = f"<locker>{locker}</locker>" if locker else ""
    return f"<persistenceAdapter><{kind} {attrs}>{inner}</{kind}></persistenceAdapter>\n"


def test_defaults_are_activemqs() -> None:
    config = BrokerConfig()
    assert config.persistence.locker.lock_acquire_sleep_interval == 10_000
    assert config.persistence.lock_keep_alive_period == 0
    assert not config.persistence.locker.fail_if_locked
    assert broker_options(config).lock == LockSettings(10_000, 0, False)
    assert config.temp_directory == Path("data") / "tmp_storage"


def test_kahadb_with_a_shared_file_locker(tmp_path: Path) -> None:
    # activemq-ha.xml's adapter, as ActiveMQ users write it.
    loaded = load_body(
        tmp_path,
        _adapter(
            "kahaDB",
            f'directory="{tmp_path}/kahadb" lockKeepAlivePeriod="2000"',
            '<shared-file-locker lockAcquireSleepInterval="500"/>',
        ),
    )
    persistence = loaded.config.persistence
    assert persistence.lock_keep_alive_period == 2000
    assert persistence.locker.lock_acquire_sleep_interval == 500
    assert origin_of(persistence.locker, "lock_acquire_sleep_interval").line == FIRST_BODY_LINE
    # lockKeepAlivePeriod is read, not one of KahaDB's own settings that are ignored.
    assert "KahaDB's own" not in warnings_of(loaded)
    options = broker_options(loaded.config)
    assert options.lock == LockSettings(acquire_interval_ms=500, keep_alive_ms=2000)
    assert options.store_dir == tmp_path / "kahadb"


def test_level_db_takes_fail_if_locked_itself_or_from_its_locker(tmp_path: Path) -> None:
    own = load_body(tmp_path, _adapter("levelDB", 'directory="x" failIfLocked="true"')).config
    assert own.persistence.locker.fail_if_locked
    assert broker_options(own).lock.fail_if_locked
    locker = load_body(
        tmp_path,
        _adapter("levelDB", 'directory="x"', '<shared-file-locker failIfLocked="true"/>'),
    ).config
    assert locker.persistence.locker.fail_if_locked
    both = load_body(
        tmp_path,
        _adapter("levelDB", 'failIfLocked="true"', '<shared-file-locker failIfLocked="false"/>'),
    ).config
    assert not both.persistence.locker.fail_if_locked  # the locker's own word wins


def test_a_locker_without_keep_alive_is_warned_about(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, _adapter("levelDB", 'directory="x"', "<shared-file-locker/>"))
    assert "no lockKeepAlivePeriod" in warnings_of(loaded)
    quiet = load_body(tmp_path, _adapter("levelDB", 'directory="x"'))
    assert "lockKeepAlivePeriod" not in warnings_of(quiet)


def test_database_lockers_are_jdbcs_and_ignored(tmp_path: Path) -> None:
    loaded = load_body(
        tmp_path,
        _adapter(
            "levelDB", 'lockKeepAlivePeriod="1000"', '<lease-database-locker lockAcquireSleepInterval="5"/>'
        ),
    )
    assert "database lockers are JDBC's" in warnings_of(loaded)
    assert loaded.config.persistence.locker.lock_acquire_sleep_interval == 10_000


def test_bad_values_name_the_element(tmp_path: Path) -> None:
    error = one_error(
        tmp_path,
        _adapter(
            "levelDB", 'lockKeepAlivePeriod="1000"', '<shared-file-locker lockAcquireSleepInterval="0"/>'
        ),
    )
    assert error.element.endswith("shared-file-locker") and "at least 1 ms" in error.reason
    error = one_error(tmp_path, _adapter("kahaDB", 'lockKeepAlivePeriod="soon"'))
    assert "lockKeepAlivePeriod" in error.reason and error.line == FIRST_BODY_LINE
    error = one_error(
        tmp_path, _adapter("levelDB", 'lockKeepAlivePeriod="1"', '<shared-file-locker lockAquireSleep="5"/>')
    )
    assert "unknown attribute 'lockAquireSleep'" in error.reason
    error = one_error(tmp_path, _adapter("levelDB", "", "<shared-file-lock/>"))
    assert "unknown element <shared-file-lock>" in error.reason


def test_units_as_activemq_writes_them(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        _adapter(
            "levelDB", 'lockKeepAlivePeriod="2 s"', '<shared-file-locker lockAcquireSleepInterval="1s"/>'
        ),
    ).config
    assert config.persistence.lock_keep_alive_period == 2000
    assert config.persistence.locker.lock_acquire_sleep_interval == 1000


def test_tmp_data_directory(tmp_path: Path) -> None:
    assert broker_options(load_body(tmp_path, "").config).temp_dir is None
    # The broker attribute, as ActiveMQ's, and the flag over it.
    path = tmp_path / "activemq.xml"
    path.write_text(
        '<broker xmlns="http://activemq.apache.org/schema/core" tmpDataDirectory="/local/a"></broker>\n'
    )
    config = load(path).config
    assert (
        config.temp_directory == Path("/local/a") and origin_of(config.broker, "tmp_data_directory").line == 1
    )
    local = apply(config, [Override("tmp_data_dir", Path("/local/tmp"), "--tmp-data-dir")])
    assert local.temp_directory == Path("/local/tmp")
    assert broker_options(local).temp_dir == Path("/local/tmp")
    assert not_applied(local) == set()


def test_flags_win_and_check_config_shows_every_setting(tmp_path: Path) -> None:
    config = load_body(
        tmp_path,
        _adapter(
            "kahaDB",
            'directory="k" lockKeepAlivePeriod="2000"',
            '<shared-file-locker lockAcquireSleepInterval="500"/>',
        ),
    ).config
    config = apply(
        config,
        [
            Override("lock_acquire_sleep_interval", 250, "--lock-acquire-sleep-interval"),
            Override("lock_keep_alive_period", 100, "--lock-keep-alive-period"),
        ],
    )
    assert broker_options(config).lock == LockSettings(acquire_interval_ms=250, keep_alive_ms=100)
    report = render(config, lambda key: key not in not_applied(config))
    lines = {line.split("=")[0].strip(): line for line in report.splitlines() if "=" in line}
    assert "250 ms" in lines["shared-file-locker lockAcquireSleepInterval"]
    assert "flag --lock-acquire-sleep-interval" in lines["shared-file-locker lockAcquireSleepInterval"]
    assert (
        "100 ms" in lines["lockKeepAlivePeriod"]
        and "flag --lock-keep-alive-period" in lines["lockKeepAlivePeriod"]
    )
    assert "false" in lines["shared-file-locker failIfLocked"]
    assert str(Path("data") / "tmp_storage") in lines["tmpDataDirectory"]
    assert "not applied" not in report


def test_the_example_documents_the_lock() -> None:
    example = Path(__file__).resolve().parents[2] / "activemq.xml.example"
    loaded = load(example)
    assert "lockKeepAlivePeriod" not in warnings_of(loaded)
    assert broker_options(loaded.config).lock == LockSettings(acquire_interval_ms=1000, keep_alive_ms=2000)
    text = example.read_text()
    for name in ("lockAcquireSleepInterval", "lockKeepAlivePeriod", "failIfLocked", "tmpDataDirectory"):
        assert name in text
