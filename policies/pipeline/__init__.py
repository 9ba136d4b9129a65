"""``s3 pipeline``: the whole Sim2Sim2Sim method in one command, with resumable stages."""
