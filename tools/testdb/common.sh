# Sourced by the test server scripts: what they share.

# free_port FIRST: the first loopback TCP port from FIRST on that nothing listens on.
free_port() {
  local p=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}
