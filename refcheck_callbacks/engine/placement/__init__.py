"""Where a monitor's batches run: on its worker thread, in a checking process, or on a service.

`RefCheckMonitor(placement=...)` picks one `Runner` (`runner.runner_for`); the monitor's
`Checking` hands it each batch of built requests and delivers what it returns. `InThread`
(`in_thread.py`) runs the pipeline right there (sharing the app's GIL); `InChildProcess`
(`process.py`) sends the batch to a child process that runs it; "service" runs the pipeline in
the thread with a checker that checks on a `refcheck serve` service (`RemoteChecker`).
"""
