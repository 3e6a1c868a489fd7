//! Installer tests (hooks install/uninstall/status).
