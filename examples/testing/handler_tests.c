/* handler_tests: how a service tests its handler with CUnit and tabq/testing.h.
 *
 * The service's handler charges an order: it reads the amount from the payload, refuses a
 * malformed one for good (dead letter), and asks for a retry in a minute when the payment
 * provider is down. The tests check each answer without a database (tabq_test_deliver), then
 * run the real queue on a throwaway SQLite file (tabq_test_open, tabq_test_drain).
 *
 *   handler_tests                  (exit status: the number of failed assertions, 0 when all pass)
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tabq/testing.h>

/* ---- The service's own code ---- */

static const tabq_table charges = {
    .size = sizeof(tabq_table),
    .name = "charges",
    .id = {.name = "id", .generated = true},
    .group = {.name = "queue"},
    .attempt = {.name = "attempt", .generated = true},
    .retry_after = {.name = "retry_after"},
    .locked_until = {.name = "locked_until"},
    .payload = {.name = "payload"},
};

static bool provider_down; /* the payment provider's state, as the handler would query it */
static long charged_cents;

static tabq_outcome charge(tabq_delivery *d, void *user) {
  (void)user;
  size_t len;
  const char *p = tabq_delivery_payload(d, &len);
  char text[32];
  snprintf(text, sizeof text, "%.*s", (int)(len < 31 ? len : 31), p ? p : "");
  char *end;
  long cents = strtol(text, &end, 10);
  if (!len || *end || cents <= 0)
    return tabq_dead_letter(); /* no retry will mend it */
  if (provider_down)
    return tabq_retry_after(60 * 1000);
  charged_cents += cents;
  return tabq_ack();
}

static tabq_subscription_options charge_options(void) {
  tabq_subscription_options o = TABQ_SUBSCRIPTION_OPTIONS_INIT;
  o.queue = "charges";
  o.handler = charge;
  o.max_attempts = 5;
  o.dead_letter_group = "charges.dead";
  return o;
}

/* ---- Its tests ---- */

static tabq_outcome deliver(const char *payload, long attempt) {
  tabq_test_message m = TABQ_TEST_MESSAGE_INIT;
  m.message.payload = payload;
  m.message.payload_len = strlen(payload);
  m.attempt = attempt;
  tabq_subscription_options o = charge_options();
  tabq_outcome out;
  tabq_error err;
  CU_ASSERT_EQUAL_FATAL(tabq_test_deliver(&charges, &o, &m, &out, &err), TABQ_OK);
  return out;
}

static void a_good_charge_is_acked(void) {
  provider_down = false;
  charged_cents = 0;
  CU_ASSERT_EQUAL(deliver("1250", 1).kind, TABQ_OUTCOME_ACK);
  CU_ASSERT_EQUAL(charged_cents, 1250);
}

static void a_malformed_amount_is_dead_lettered(void) {
  CU_ASSERT_EQUAL(deliver("12.50", 1).kind, TABQ_OUTCOME_DEAD_LETTER);
}

static void an_outage_retries_in_a_minute_then_gives_up(void) {
  provider_down = true;
  tabq_outcome out = deliver("300", 1);
  CU_ASSERT_EQUAL(out.kind, TABQ_OUTCOME_RETRY_AFTER);
  CU_ASSERT_EQUAL(out.delay_ms, 60000);
  /* At max_attempts tabq moves the row to the dead letter instead. */
  CU_ASSERT_EQUAL(deliver("300", 5).kind, TABQ_OUTCOME_DEAD_LETTER);
  provider_down = false;
}

static void the_queue_drains_on_a_real_table(void) {
  const tabq_table *tables[] = {&charges};
  tabq_broker *b;
  tabq_error err;
  CU_ASSERT_EQUAL_FATAL(tabq_test_open(tables, 1, NULL, &b, &err), TABQ_OK);
  const char *payloads[] = {"100", "200", "oops"};
  for (int i = 0; i < 3; i++) {
    tabq_message m = TABQ_MESSAGE_INIT;
    m.group = "charges";
    m.payload = payloads[i];
    m.payload_len = strlen(payloads[i]);
    CU_ASSERT_EQUAL(tabq_publish(b, &charges, &m, &err), TABQ_OK);
  }
  charged_cents = 0;
  tabq_subscription_options o = charge_options();
  tabq_stats st;
  CU_ASSERT_EQUAL(tabq_test_drain(b, &charges, &o, &st, sizeof st, &err), TABQ_OK);
  CU_ASSERT_EQUAL(charged_cents, 300);
  CU_ASSERT_EQUAL(st.acked, 2);
  CU_ASSERT_EQUAL(st.dead_lettered, 1);
  tabq_test_close(b);
}

int main(void) {
  if (CU_initialize_registry() != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite("charge", NULL, NULL);
  CU_add_test(s, "a good charge is acked", a_good_charge_is_acked);
  CU_add_test(s, "a malformed amount is dead-lettered", a_malformed_amount_is_dead_lettered);
  CU_add_test(s, "an outage retries in a minute, then gives up",
              an_outage_retries_in_a_minute_then_gives_up);
  CU_add_test(s, "the queue drains on a real table", the_queue_drains_on_a_real_table);
  CU_basic_set_mode(CU_BRM_VERBOSE);
  CU_basic_run_tests();
  int failed = (int)CU_get_number_of_failures();
  CU_cleanup_registry();
  return failed;
}
