"""The Hermes product's own tables: which error gets which answer, and the deviations from 0.19.0."""
