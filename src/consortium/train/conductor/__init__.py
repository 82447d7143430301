"""Training a Conductor (a model that writes workflows): the supervised warm start, GRPO,
rejection-sampling fine-tuning, the staged run that chains them, the mixed records pool it learns
on, the workflow reward, sampling and validity, and measuring a conductor on that pool."""
