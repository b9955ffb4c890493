"""An independent WS-Eventing peer for lather's interop test, built from the `sdc11073`
package (IEEE 11073 SDC: WS-Eventing 2004/08 over WS-Addressing 1.0 and SOAP 1.2).

Two roles, each printing one JSON object per line on stdout:

  consumer --source URL --count N [--timeout S]
      sdc11073's ConsumerSubscription subscribes to URL (filter: the DPWS action dialect,
      EpisodicMetricReport; NotifyTo and EndTo carry a reference parameter), prints
      {"ready": ...}, waits for N notifications on sdc11073's own HTTP server (each read and
      schema-validated by sdc11073's MessageReader), then sends GetStatus, Renew and
      Unsubscribe and prints {"events": [...], ...}.

  source --count N [--timeout S]
      sdc11073's ReferenceParamSubscriptionsManager (the provider's subscription manager)
      on sdc11073's HTTP server; prints {"source": URL}, waits for one subscription, sends
      N EpisodicMetricReports to it, waits for its Unsubscribe and prints {"sent": N, ...}.

Run with the pinned package: interop/setup.sh prints the venv's python.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
import uuid
from urllib.parse import urlsplit

from lxml import etree

from sdc11073 import loghelper
from sdc11073.consumer.request_handler_deferred import EmptyResponse
from sdc11073.consumer.subscription import ConsumerSubscription
from sdc11073.definitions_sdc import SdcV1Definitions
from sdc11073.dispatch.dispatchkey import DispatchKey, RequestDispatcher
from sdc11073.dispatch.messageconverter import MessageConverterMiddleware
from sdc11073.httpserver.httpserverimpl import HttpServerThreadBase
from sdc11073.namespaces import EventingActions, default_ns_helper
from sdc11073.provider.subscriptionmgr import ReferenceParamSubscriptionsManager
from sdc11073.pysoap.msgfactory import MessageFactory
from sdc11073.pysoap.msgreader import MessageReader
from sdc11073.pysoap.soapclient import SoapClient
from sdc11073.pysoap.soapclientpool import SoapClientPool
from sdc11073.xml_types import eventing_types
from sdc11073.xml_types.actions import Actions
from sdc11073.xml_types.addressing_types import EndpointReferenceType
from sdc11073.xml_types.dpws_types import DeviceEventingFilterDialectURI, HostedServiceType

EVENT_ACTION = Actions.EpisodicMetricReport
MSG_NS = default_ns_helper.MSG.namespace
PM_NS = default_ns_helper.PM.namespace
XSI_NS = 'http://www.w3.org/2001/XMLSchema-instance'
WSE = default_ns_helper.WSE

LOGGER = loghelper.get_logger_adapter('lather.interop')


def emit(obj: dict) -> None:
    """One JSON line on stdout."""
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


def report(i: int) -> etree._Element:
    """The i-th event: a BICEPS EpisodicMetricReport (valid against the SDC schemas)."""
    text = (
        f'<msg:EpisodicMetricReport xmlns:msg="{MSG_NS}" xmlns:pm="{PM_NS}" xmlns:xsi="{XSI_NS}"'
        f' MdibVersion="{i}" SequenceId="urn:uuid:00000000-0000-4000-8000-000000000001">'
        f'<msg:ReportPart><msg:MetricState xsi:type="pm:NumericMetricState" DescriptorHandle="m{i}">'
        f'<pm:MetricValue Value="{i}"><pm:MetricQuality Validity="Vld"/></pm:MetricValue>'
        '</msg:MetricState></msg:ReportPart></msg:EpisodicMetricReport>'
    )
    return etree.fromstring(text.encode())


def start_http() -> HttpServerThreadBase:
    server = HttpServerThreadBase('127.0.0.1', None, supported_encodings=[], logger=LOGGER)
    server.start()
    if not server.started_evt.wait(10):
        raise RuntimeError('sdc11073 http server did not start')
    return server


def soap_client_factory(reader: MessageReader):
    def make(netloc: str, accepted_encodings=None) -> SoapClient:  # noqa: ANN001
        return SoapClient(netloc, 10, LOGGER, None, SdcV1Definitions, reader,
                          supported_encodings=[], request_encodings=accepted_encodings)
    return make


def consumer(args: argparse.Namespace) -> int:
    reader = MessageReader(SdcV1Definitions, None, LOGGER)
    factory = MessageFactory(SdcV1Definitions, None, LOGGER)
    server = start_http()
    dispatcher = RequestDispatcher()
    server.dispatcher.register_instance('sink', MessageConverterMiddleware(reader, factory, LOGGER, dispatcher))
    sink = f'{server.base_url}sink'

    received: list[dict] = []
    ended: list[dict] = []
    done = threading.Event()

    def on_event(request_data):  # noqa: ANN001, ANN202
        message = request_data.message_data
        group = message.mdib_version_group
        received.append({
            'action': message.action,
            'to': message.p_msg.header_info_block.To,
            'mdib_version': group.mdib_version if group else None,
            'body': etree.tostring(message.p_msg.msg_node).decode(),
            'reference_parameters': [
                {'name': etree.QName(p).localname, 'namespace': etree.QName(p).namespace, 'text': p.text}
                for p in message.p_msg.header_info_block.reference_parameters
            ],
        })
        if len(received) >= args.count:
            done.set()
        return EmptyResponse()

    def on_end(request_data):  # noqa: ANN001, ANN202
        end = eventing_types.SubscriptionEnd.from_node(request_data.message_data.p_msg.msg_node)
        ended.append({'status': end.Status})
        return EmptyResponse()

    dispatcher.register_post_handler(
        DispatchKey(EVENT_ACTION, default_ns_helper.MSG.tag('EpisodicMetricReport')), on_event)
    dispatcher.register_post_handler(DispatchKey(EventingActions.SubscriptionEnd, WSE.tag('SubscriptionEnd')), on_end)

    hosted = HostedServiceType()
    epr = EndpointReferenceType()
    epr.Address = args.source
    hosted.EndpointReference.append(epr)
    filter_type = eventing_types.FilterType()
    filter_type.Dialect = DeviceEventingFilterDialectURI.ACTION
    filter_type.text = EVENT_ACTION
    make_client = soap_client_factory(reader)
    subscription = ConsumerSubscription(factory, SdcV1Definitions.data_model,
                                        lambda address: make_client(urlsplit(address).netloc),
                                        hosted, filter_type, sink, sink, '')
    subscription.notify_to_identifier = etree.Element(ConsumerSubscription.IDENT_TAG)
    subscription.notify_to_identifier.text = uuid.uuid4().urn
    subscription.end_to_identifier = etree.Element(ConsumerSubscription.IDENT_TAG)
    subscription.end_to_identifier.text = uuid.uuid4().urn
    subscription.subscribe(expires=600)
    if not subscription.is_subscribed:
        emit({'error': 'sdc11073 could not subscribe (see its log on stderr)'})
        return 1
    manager = subscription.subscribe_response.SubscriptionManager
    emit({
        'ready': True,
        'notify_to': sink,
        'identifier': subscription.notify_to_identifier.text,
        'granted_expires': subscription.granted_expires,
        'manager': manager.Address,
        'manager_reference_parameters': [etree.tostring(p).decode() for p in manager.ReferenceParameters],
    })
    got_all = done.wait(args.timeout)
    status = subscription.get_status()
    renewed = subscription.renew(expires=300)
    subscription.unsubscribe()
    emit({
        'events': received,
        'all_received': got_all,
        'subscription_end': ended,
        'get_status': status,
        'renew': renewed,
        'unsubscribed': not subscription.is_subscribed,
    })
    server.stop()
    return 0


def source(args: argparse.Namespace) -> int:
    reader = MessageReader(SdcV1Definitions, None, LOGGER)
    factory = MessageFactory(SdcV1Definitions, None, LOGGER)
    server = start_http()
    pool = SoapClientPool(soap_client_factory(reader), log_prefix='')
    manager = ReferenceParamSubscriptionsManager(SdcV1Definitions, factory, pool, max_subscription_duration=3600)
    manager.set_base_urls([urlsplit(server.base_url)])
    dispatcher = RequestDispatcher()
    seen: list[str] = []

    def recorded(name: str, handler):  # noqa: ANN001, ANN202
        def handle(request_data):  # noqa: ANN001, ANN202
            seen.append(name)
            return handler(request_data)
        return handle

    for name, handler in [
        ('Subscribe', manager.on_subscribe_request),
        ('Renew', manager.on_renew_request),
        ('GetStatus', manager.on_get_status_request),
        ('Unsubscribe', manager.on_unsubscribe_request),
    ]:
        dispatcher.register_post_handler(
            DispatchKey(getattr(EventingActions, name), WSE.tag(name)), recorded(name, handler))
    server.dispatcher.register_instance('events', MessageConverterMiddleware(reader, factory, LOGGER, dispatcher))
    emit({'source': f'{server.base_url}events', 'action': EVENT_ACTION})

    deadline = time.monotonic() + args.timeout
    subscription = None
    while time.monotonic() < deadline and subscription is None:
        objects = list(manager._subscriptions.objects)  # noqa: SLF001
        subscription = objects[0] if objects else None
        time.sleep(0.05)
    if subscription is None:
        emit({'error': 'no subscription arrived', 'requests': seen})
        return 1
    time.sleep(0.2)  # lets the subscriber's sink settle after its SubscribeResponse
    for i in range(1, args.count + 1):
        manager.send_to_subscribers(report(i), EVENT_ACTION, None)
    while time.monotonic() < deadline and subscription.unsubscribed_at is None:
        time.sleep(0.05)
    emit({
        'sent': args.count,
        'requests': seen,
        'unsubscribed': subscription.unsubscribed_at is not None,
        'delivery_errors': subscription.notify_errors,
        'notify_to': subscription.notify_to_address,
        'notify_reference_parameters': [etree.tostring(p).decode() for p in subscription.notify_ref_params],
        'filter': subscription.filter_type.text,
    })
    server.stop()
    return 0


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    roles = parser.add_subparsers(dest='role', required=True)
    c = roles.add_parser('consumer')
    c.add_argument('--source', required=True)
    c.add_argument('--count', type=int, default=5)
    c.add_argument('--timeout', type=float, default=20)
    s = roles.add_parser('source')
    s.add_argument('--count', type=int, default=5)
    s.add_argument('--timeout', type=float, default=20)
    args = parser.parse_args()
    return consumer(args) if args.role == 'consumer' else source(args)


if __name__ == '__main__':
    sys.exit(main())
