# Developer shortcuts. `make ray-test` runs the real two-node Ray cluster test alone
# (needs the ray extra: pip install -e ".[dev,ray]").

.PHONY: ray-test

ray-test:
	python -m pytest -q -p no:cacheprovider tests/test_batch_ray.py
