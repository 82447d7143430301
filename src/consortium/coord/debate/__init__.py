"""Debate: models answer a question alone, then in turn answer again after reading each other,
until they agree or a round cap; the rule (`rule`), its messages (`transcript`), the live policy
(`policy`) and the learned rule of when to talk (`gate`)."""
