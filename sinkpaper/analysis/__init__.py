"""Measurements and analyses the chapters show, as plain functions (no chart, no widget: the book draws what
they return, and the tests check them without altair): the Section-3 measurements on pretrained LMs
(`section3`), a model with and without its BOS (`packing_bos`), the fused kernels checked against their
references and their stored benchmarks read back (`kernel_checks`)."""
