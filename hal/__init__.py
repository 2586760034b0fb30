"""Hardware abstraction layer: ports (abstract devices) and their backends."""
