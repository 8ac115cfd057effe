"""Where a monitor's batches run: on its worker thread, or in a checking process.

`RefCheckMonitor(placement=...)` picks one `Runner`; the worker hands it each batch of built
requests and delivers what it returns. `InThread` runs the pipeline right there (sharing the
app's GIL); `InChildProcess` (`process.py`) sends the batch to a child process that runs it.
A checker on a service (`RemoteChecker`) works from either.
"""
