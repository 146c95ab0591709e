// placeholder until the fake lands
