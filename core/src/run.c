/* Running until SIGINT or SIGTERM: the handler only posts a semaphore (async-signal-safe); the
 * waiting thread then shuts the broker down gracefully, letting deliveries in work settle.
 * The calling thread unblocks both signals while it waits: a service that blocked them before
 * its brokers started (so no worker thread takes them, and one that comes early stays pending
 * instead of ending the process) has them delivered here. */
#include <errno.h>
#include <semaphore.h>
#include <signal.h>

#include "engine.h"

static sem_t stop_signal;
static atomic_bool stop_signal_ready;

static void on_signal(int sig) {
  (void)sig;
  sem_post(&stop_signal);
}

int tabq_run(tabq_broker *b) {
  if (!atomic_exchange(&stop_signal_ready, true))
    sem_init(&stop_signal, 0, 0);
  struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigset_t stops, old_mask;
  sigemptyset(&stops);
  sigaddset(&stops, SIGINT);
  sigaddset(&stops, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &stops, &old_mask);
  while (!atomic_load(&b->stop_requested)) {
    if (sem_wait(&stop_signal) == 0)
      break;
    if (errno != EINTR)
      break;
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  tabq__logf(&b->log, TABQ_LOG_INFO, "stopping: letting deliveries in work settle");
  tabq_shutdown(b);
  return TABQ_OK;
}

void tabq_stop(tabq_broker *b) {
  atomic_store(&b->stop_requested, true);
  if (!atomic_exchange(&stop_signal_ready, true))
    sem_init(&stop_signal, 0, 0);
  sem_post(&stop_signal);
}
