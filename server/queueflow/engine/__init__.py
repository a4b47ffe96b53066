"""The engine: every QueueFlow use case, over a `Store` and a `Clock` (the only caller of the store).

It validates input, reads the clock, asks `core` what should happen and has the store record it. `Engine` is
the one object callers hold; it is composed of collaborators, each built from the same ports and none
holding a reference back to the engine:

    Engine ──▶ Queues      (engine.queues)      counts, flow-control settings, held-back jobs, throughput
           ──▶ Workflows   (engine._workflows)  create, read, cancel, signal, grow; advance when a step's job finishes
           ──▶ Schedules   (engine.schedules)   cron schedules and the scheduler's tick
           ──▶ Endpoints   (engine.endpoints)   push endpoints, and where a delivery may connect
           ──▶ Triggers    (engine.triggers)    a tenant's triggers, and the events that start them

`Workflows` is the engine's own: callers reach a workflow through the `Engine` methods (`WorkflowFacade`).

Every job write that finishes a step's job hands the job to `Workflows.on_jobs_finished`.
"""

from queueflow.core.cursor import MAX_PAGE
from queueflow.engine.engine import Engine
from queueflow.engine.settings import EngineSettings

__all__ = ["MAX_PAGE", "Engine", "EngineSettings"]
