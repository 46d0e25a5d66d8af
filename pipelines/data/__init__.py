"""One loader per data source, and the tf.data assembly the tasks share."""
