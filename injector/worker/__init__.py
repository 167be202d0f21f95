"""The campaign's workers: one warm process per job slot (see `injector.worker.core`).

    python -m injector.worker PLAN.json SLOT COMMANDS_FD EVENTS_FD

Modules: `core` (the worker and its commands), `pytest_plugin` (taking over pytest's run
loop), `guards` (running tests, scripts and commands), `forking` (children with deadlines,
ending process trees), `output` (reading a guard's output). The messages are in
`injector.protocol`.
"""
