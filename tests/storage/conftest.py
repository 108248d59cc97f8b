"""Fixtures of the object-storage tests: the S3 server on loopback (``tests/s3_server.py``)."""

from s3_server import bucket, s3_endpoint  # noqa: F401
