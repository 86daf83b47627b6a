"""confluent-kafka, by what statectl does with a cluster: connect (reach and diagnose), admin
(topics and their configs), consume, produce, offsets."""
