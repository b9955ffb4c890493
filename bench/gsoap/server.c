/*
 * Multi-threaded gSOAP echo server used as the baseline in
 * bench/echo-vs-gsoap.sh.
 *
 * Usage: lather-gsoap-echo PORT [MAX_KEEP_ALIVE]
 *
 * Binds 127.0.0.1:PORT, accepts connections in a loop and serves each
 * connection on its own detached thread with a copy of the context
 * (soap_copy).  HTTP keep-alive is enabled in both directions; by default a
 * connection is kept open for any number of requests (max_keep_alive = 0),
 * pass MAX_KEEP_ALIVE to cap the requests served per connection.
 */
#include "soapH.h"
#include "echo.nsmap"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LISTEN_BACKLOG 1024
#define IO_TIMEOUT_S 60

static void *serve_connection(void *arg)
{
  struct soap *soap = (struct soap *)arg;

  /* soap_serve loops over the requests of a keep-alive connection. */
  soap_serve(soap);
  soap_destroy(soap);
  soap_end(soap);
  soap_free(soap); /* closes the socket and frees the copy */
  return NULL;
}

int main(int argc, char **argv)
{
  struct soap *soap;
  pthread_attr_t attr;
  int port;
  int max_keep_alive = 0;

  if (argc < 2 || argc > 3)
  {
    fprintf(stderr, "usage: %s PORT [MAX_KEEP_ALIVE]\n", argv[0]);
    return 2;
  }
  port = atoi(argv[1]);
  if (port <= 0 || port > 65535)
  {
    fprintf(stderr, "invalid port: %s\n", argv[1]);
    return 2;
  }
  if (argc == 3)
    max_keep_alive = atoi(argv[2]);

  signal(SIGPIPE, SIG_IGN);

  soap = soap_new1(SOAP_IO_KEEPALIVE);
  if (!soap)
  {
    fprintf(stderr, "soap_new1 failed\n");
    return 1;
  }
  soap->bind_flags = SO_REUSEADDR;
  soap->max_keep_alive = max_keep_alive;
  soap->send_timeout = IO_TIMEOUT_S;
  soap->recv_timeout = IO_TIMEOUT_S;

  if (!soap_valid_socket(soap_bind(soap, "127.0.0.1", port, LISTEN_BACKLOG)))
  {
    soap_print_fault(soap, stderr);
    soap_free(soap);
    return 1;
  }
  fprintf(stderr, "gsoap echo listening on 127.0.0.1:%d\n", port);

  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 * 1024);

  for (;;)
  {
    struct soap *copy;
    pthread_t tid;
    int rc;

    if (!soap_valid_socket(soap_accept(soap)))
    {
      /* Transient accept errors (EMFILE, ECONNABORTED, ...) must not stop
       * the server. */
      soap_print_fault(soap, stderr);
      continue;
    }
    copy = soap_copy(soap);
    if (!copy)
    {
      soap_force_closesock(soap);
      continue;
    }
    /* The copy owns the accepted socket now. */
    soap->socket = SOAP_INVALID_SOCKET;
    rc = pthread_create(&tid, &attr, serve_connection, copy);
    if (rc != 0)
    {
      fprintf(stderr, "pthread_create: %s\n", strerror(rc));
      soap_force_closesock(copy);
      soap_free(copy);
    }
  }

  /* not reached */
  pthread_attr_destroy(&attr);
  soap_free(soap);
  return 0;
}

/* The service operation: echo the input text. */
int ns__echo(struct soap *soap, char *text, char **result)
{
  (void)soap;
  *result = text ? text : (char *)"";
  return SOAP_OK;
}
