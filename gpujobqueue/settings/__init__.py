"""What users give: the keywords' declarations, their validation, dask config and the bounds."""
