"""SpotStatus (robots/spot/core/robot.py): the fault order and wording the skills node reports, as for the UR5e's ArmStatus."""
from __future__ import annotations

import pytest

from skills_node.core.arm import ArmFault, FaultKind
from skills_node.robots.spot.core.robot import (
    PASSWORD_ENV,
    USERNAME_ENV,
    SpotCredentials,
    SpotFault,
    SpotFaultCause,
    SpotStatus,
)

HEALTHY = SpotStatus(connected=True, powered=True, standing=True, lease_held=True)


def test_healthy_status_is_ok() -> None:
    assert HEALTHY.ok and HEALTHY.fault() is None
    assert HEALTHY.describe() == "motors on, standing, lease held"


@pytest.mark.parametrize(("status", "kind"), [
    (SpotStatus(connected=False, estopped=True, detail="TimedOutError"), FaultKind.CONNECTION_LOST),
    (SpotStatus(connected=True, estopped=True, behavior_faults=("CAUSE_FALL",), lease_held=True, powered=True),
     FaultKind.EMERGENCY_STOP),
    (SpotStatus(connected=True, behavior_faults=("CAUSE_FALL",), powered=True, lease_held=True),
     FaultKind.SAFETY_STOP),
    (SpotStatus(connected=True, powered=True, lease_held=False), FaultKind.LEASE_LOST),
    (SpotStatus(connected=True, powered=False, lease_held=True), FaultKind.NOT_RUNNING),
])
def test_most_severe_fault_first(status: SpotStatus, kind: FaultKind) -> None:
    assert status.fault() == kind
    assert not status.ok


def test_describe_names_the_estops_and_faults() -> None:
    status = SpotStatus(connected=True, estopped=True, estop_detail="hardware_estop",
                        behavior_faults=("CAUSE_FALL", "CAUSE_HARDWARE"), lease_held=True)
    assert status.describe() == ("motors off, not standing, lease held, e-stopped (hardware_estop), "
                                 "behaviour faults: CAUSE_FALL, CAUSE_HARDWARE")
    assert SpotStatus(connected=False, detail="robot state: TimedOutError").describe() == \
        "not connected: robot state: TimedOutError"


@pytest.mark.parametrize(("cause", "kind"), [
    (SpotFaultCause.LEASE_LOST, FaultKind.LEASE_LOST),
    (SpotFaultCause.ESTOP, FaultKind.EMERGENCY_STOP),
    (SpotFaultCause.BEHAVIOR_FAULT, FaultKind.SAFETY_STOP),
    (SpotFaultCause.CONNECTION_LOST, FaultKind.CONNECTION_LOST),
    (SpotFaultCause.TIMEOUT, FaultKind.TIMEOUT),
])
def test_spot_fault_is_an_arm_fault_with_its_kind(cause: SpotFaultCause, kind: FaultKind) -> None:
    fault = SpotFault(cause, "detail")
    assert isinstance(fault, ArmFault)
    assert fault.kind == kind and fault.cause == cause
    # the cause is named only where it says more than the kind ("lease lost: detail", not twice)
    expected = f"{kind.value}: detail" if cause.value == kind.value else f"{kind.value}: {cause.value}: detail"
    assert str(fault) == expected


def test_credentials_come_from_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(USERNAME_ENV, "operator")
    monkeypatch.setenv(PASSWORD_ENV, "from-env")
    assert SpotCredentials.from_env() == SpotCredentials("operator", "from-env")
    monkeypatch.delenv(USERNAME_ENV)
    with pytest.raises(SpotFault, match=USERNAME_ENV):
        SpotCredentials.from_env()
