"""What a run and a study say at the end: the run's summary (`summary`) and verdict (`verdict`), plots (`plots`),
and the statistics (`stats`)."""
