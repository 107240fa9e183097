"""The ground floor of the features: what every feature may use (access, the
Run / Task / RerunGroup / Document / Policy models, prices, shared form fields,
model endpoints, anchor-pattern names, paging, the queue, charts, CSV cells,
step payloads). Nothing here imports a feature."""
