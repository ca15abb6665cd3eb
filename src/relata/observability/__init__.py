"""Structured logging, correlation ids and Prometheus metrics."""
