"""Provider payloads in their documented shapes, shared by the tests that feed transports."""
