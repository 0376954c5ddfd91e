"""The authoring experiment: subjects write programs for tasks, in cohorts of prompt formats;
a checker judges each artefact in a sandbox and its error goes back as the next user turn."""
