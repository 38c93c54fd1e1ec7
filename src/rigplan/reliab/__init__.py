"""Reliability: interruption rates, checkpoint interval, goodput, storage sizing (pure functions).

Entry points: `reliability_for_job` (expected wall time and goodput of one job),
`storage_requirements` (bandwidth and capacity a job needs), `psu_incident` (the seed article's
day-7 power-supply failure). Method and sources: docs/methodology/reliability.md.

May import: domain, units, errors.
"""

from __future__ import annotations

from rigplan.reliab.checkpoint import (
    MIXED_ADAM_CHECKPOINT_BYTES_PER_PARAM as MIXED_ADAM_CHECKPOINT_BYTES_PER_PARAM,
)
from rigplan.reliab.checkpoint import IntervalRule as IntervalRule
from rigplan.reliab.checkpoint import daly_wall_time_s as daly_wall_time_s
from rigplan.reliab.checkpoint import first_order_wall_time_s as first_order_wall_time_s
from rigplan.reliab.checkpoint import optimal_interval_s as optimal_interval_s
from rigplan.reliab.checkpoint import training_checkpoint_bytes as training_checkpoint_bytes
from rigplan.reliab.failures import DEFAULT_FAILURE_MODEL as DEFAULT_FAILURE_MODEL
from rigplan.reliab.failures import LLAMA3_405B as LLAMA3_405B
from rigplan.reliab.failures import FailureCause as FailureCause
from rigplan.reliab.failures import FailureModel as FailureModel
from rigplan.reliab.failures import failure_model_from_counts as failure_model_from_counts
from rigplan.reliab.failures import failure_model_from_mtbf as failure_model_from_mtbf
from rigplan.reliab.failures import job_interruption_rate_per_s as job_interruption_rate_per_s
from rigplan.reliab.failures import job_mtbf_s as job_mtbf_s
from rigplan.reliab.failures import psu_redundancy_factor as psu_redundancy_factor
from rigplan.reliab.goodput import DEFAULT_RESTART_S as DEFAULT_RESTART_S
from rigplan.reliab.goodput import ReliabilityResult as ReliabilityResult
from rigplan.reliab.goodput import reliability_for_job as reliability_for_job
from rigplan.reliab.psu import PsuIncident as PsuIncident
from rigplan.reliab.psu import PsuOutcome as PsuOutcome
from rigplan.reliab.psu import psu_incident as psu_incident
from rigplan.reliab.storage import DEFAULT_STORAGE as DEFAULT_STORAGE
from rigplan.reliab.storage import StorageRequirements as StorageRequirements
from rigplan.reliab.storage import StorageSpec as StorageSpec
from rigplan.reliab.storage import ceph as ceph
from rigplan.reliab.storage import checkpoint_write_s as checkpoint_write_s
from rigplan.reliab.storage import nvme_gen4 as nvme_gen4
from rigplan.reliab.storage import nvme_gen5 as nvme_gen5
from rigplan.reliab.storage import parallel_fs as parallel_fs
from rigplan.reliab.storage import raid0 as raid0
from rigplan.reliab.storage import storage_requirements as storage_requirements
from rigplan.reliab.storage import tectonic_llama3 as tectonic_llama3
