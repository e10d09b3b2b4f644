import csv, math, collections, sys
def load(f):
    c=collections.defaultdict(dict)
    for r in csv.DictReader(open(f)):
        c[(r['op'],int(r['ranks']),r['fabric_level'])].setdefault(int(r['bytes']),[]).append(float(r['time_ns']))
    return {k:sorted((b,sum(v)/len(v)) for b,v in d.items()) for k,d in c.items()}
def factor(op,n):
    return 2*(n-1)/n if op=='all_reduce' else (n-1)/n
def q(v,x): v=sorted(v); return v[int(x*(len(v)-1))]
for f in sys.argv[1:]:
    cur=load(f); errs=[]
    for k,pts in cur.items():
        # monotone
        for i in range(1,len(pts)-1):
            (b0,t0),(b1,t1),(b2,t2)=pts[i-1],pts[i],pts[i+1]
            tt=math.exp(math.log(t0)+(math.log(b1)-math.log(b0))/(math.log(b2)-math.log(b0))*(math.log(max(t2,t0))-math.log(t0)))
            errs.append(abs(tt-t1)/t1)
    print(f.split('/')[-1],'sizes held out: n=%d median %.2f%% p90 %.2f%%'%(len(errs),100*q(errs,.5),100*q(errs,.9)))
    # ranks 4 from 2 and 8 in busbw-normalized time, log n
    e2=[]
    for (op,n,lvl),pts in cur.items():
        if n!=4 or (op,2,lvl) not in cur or (op,8,lvl) not in cur: continue
        a=dict(cur[(op,2,lvl)]); b=dict(cur[(op,8,lvl)])
        for by,t in pts:
            if by not in a or by not in b: continue
            w=(math.log(4)-math.log(2))/(math.log(8)-math.log(2))
            la=math.log(a[by]/factor(op,2)); lb=math.log(b[by]/factor(op,8))
            pred=math.exp(la+w*(lb-la))*factor(op,4)
            e2.append(abs(pred-t)/t)
    if e2: print('   4 from 2 and 8: n=%d median %.2f%% p90 %.2f%%'%(len(e2),100*q(e2,.5),100*q(e2,.9)))
    e3=[]
    for (op,n,lvl),pts in cur.items():
        if not (op,n-1,lvl) in cur or not (op,n+1,lvl) in cur: continue
        a=dict(cur[(op,n-1,lvl)]); b=dict(cur[(op,n+1,lvl)])
        for by,t in pts:
            if by not in a or by not in b: continue
            w=(math.log(n)-math.log(n-1))/(math.log(n+1)-math.log(n-1))
            la=math.log(a[by]/factor(op,n-1)); lb=math.log(b[by]/factor(op,n+1))
            pred=math.exp(la+w*(lb-la))*factor(op,n); e3.append((n,abs(pred-t)/t))
    if e3:
        for n in sorted({x for x,_ in e3}):
            v=[e for x,e in e3 if x==n]; print('   %d from %d and %d: median %.2f%% p90 %.2f%%'%(n,n-1,n+1,100*q(v,.5),100*q(v,.9)))
