/*
 * gSOAP service definition for the lather echo benchmark.
 *
 * Processed by soapcpp2 (see build.sh).  The operation is rpc/literal, so a
 * request
 *
 *   <ns:echo xmlns:ns="urn:lather:echo"><text>...</text></ns:echo>
 *
 * is answered with
 *
 *   <ns:echoResponse xmlns:ns="urn:lather:echo"><result>...</result></ns:echoResponse>
 *
 * Both SOAP 1.1 and SOAP 1.2 envelopes are accepted; the answer uses the
 * version of the request.
 */

//gsoap ns service name:            echo
//gsoap ns service namespace:       urn:lather:echo
//gsoap ns service style:           rpc
//gsoap ns service encoding:        literal
//gsoap ns service location:        http://127.0.0.1:18081/
//gsoap ns service method-action:   echo "urn:lather:echo#echo"

//gsoap ns schema namespace:        urn:lather:echo
//gsoap ns schema form:             unqualified

/// Returns its input unchanged.
int ns__echo(char *text, char **result);
