"""The engine: the monitor, its bounded queue and worker, and the pipeline it drives.

One answer's path, each step a named module:

    integration -> RefCheckMonitor.submit (monitor: sample; submission: keep the fields)
      -> BackgroundWorker.put (worker: the bounded queue)
      -> Checking.check (checking: intake.paired, intake.build_request, the placement's Runner)
      -> Pipeline.run (pipeline: redact (redaction, failing closed), prepare, extract, check,
         conflict, calibrate, aggregate)
      -> Checking.deliver -> Delivery (delivery: exporters, then on_result hooks)

What is not checked is counted on the way (`counters`), by a reason of `contract.reasons`.
"""
