"""The hardware path: compile, run and capture a kernel with the Neuron SDK on a Trainium device, then read
the capture with the same analysis as nkidev's own profiles (`nkidev profile --hardware`, `validate --hardware`)."""
